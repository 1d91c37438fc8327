//! A synthetic input for ISPC's `deferred` example, whose own data files
//! (`data/pp1280x720.bin`, `pp1920x1200.bin`) are large files a checkout may lack.
//!
//! The example's host reads a file in its own format (`CreateInputDataFromFile` in its
//! `common.cpp`): an `InputHeader` (a 4x4 projection, the near and far planes, the
//! framebuffer's width and height, the number of lights, the size of the data chunk and
//! the offsets of its sixteen arrays, 152 bytes), then the chunk. The arrays are the
//! G-buffer (view depth as a projected `z`, the normal in the spheremap encoding the
//! kernel decodes, the specular amount and power as `float16`, the albedo as bytes)
//! and the lights (view-space position, attenuation begin and end, colour). This scene
//! is our own: a rippled floor receding from the camera, lit by point lights placed
//! with a fixed seed, so every run writes the same bytes.

use std::f32::consts::PI;
use std::path::Path;

/// The arrays of the chunk, in the header's order.
const ARRAYS: usize = 16;

/// The bytes of a scene of `width` x `height` pixels and `lights` lights.
pub fn deferred_scene(width: u32, height: u32, lights: u32) -> Vec<u8> {
    let (near, far) = (0.5f32, 100.0f32);
    let p22 = 1.0 / (PI / 6.0).tan();
    let p11 = p22 * height as f32 / width as f32;
    let p33 = far / (far - near);
    let p43 = -near * far / (far - near);
    let proj = [
        p11, 0.0, 0.0, 0.0, 0.0, p22, 0.0, 0.0, 0.0, 0.0, p33, 1.0, 0.0, 0.0, p43, 0.0,
    ];
    let pixels = (width * height) as usize;
    let mut arrays: Vec<Vec<u8>> = vec![Vec::new(); ARRAYS];
    for y in 0..height {
        for x in 0..width {
            let (fx, fy) = (x as f32, y as f32);
            let depth =
                5.0 + 20.0 * fy / height as f32 + 2.0 * (fx * 0.05).sin() * (fy * 0.07).cos();
            put_f32(&mut arrays[0], p33 + p43 / depth);
            let (ex, ey) = encode_normal(0.3 * (fx * 0.05).sin(), 0.3 * (fy * 0.07).cos(), -1.0);
            put_half(&mut arrays[1], ex);
            put_half(&mut arrays[2], ey);
            put_half(&mut arrays[3], 0.2 + 0.6 * ((x ^ y) & 15) as f32 / 15.0);
            put_half(&mut arrays[4], 8.0 + ((x * y) % 48) as f32);
            arrays[5].push((x * 7) as u8);
            arrays[6].push((y * 5) as u8);
            arrays[7].push(((x + y) * 3) as u8);
        }
    }
    let mut rng = Lcg(1);
    for _ in 0..lights {
        let z = rng.range(4.0, 30.0);
        let begin = rng.range(0.5, 2.0);
        put_f32(&mut arrays[8], rng.range(-0.6, 0.6) * z);
        put_f32(&mut arrays[9], rng.range(-0.4, 0.4) * z);
        put_f32(&mut arrays[10], z);
        put_f32(&mut arrays[11], begin);
        for array in &mut arrays[12..15] {
            put_f32(array, rng.range(0.2, 1.0));
        }
        put_f32(&mut arrays[15], begin + rng.range(2.0, 6.0));
    }
    debug_assert_eq!(arrays[0].len(), 4 * pixels);
    let mut chunk = Vec::new();
    let mut offsets = [0i32; ARRAYS];
    for (i, a) in arrays.iter().enumerate() {
        chunk.resize(chunk.len().next_multiple_of(64), 0);
        offsets[i] = chunk.len() as i32;
        chunk.extend_from_slice(a);
    }
    let mut out = Vec::with_capacity(152 + chunk.len());
    proj.iter()
        .chain(&[near, far])
        .for_each(|v| put_f32(&mut out, *v));
    for v in [
        width as i32,
        height as i32,
        lights as i32,
        chunk.len() as i32,
    ] {
        out.extend(v.to_le_bytes());
    }
    offsets.iter().for_each(|o| out.extend(o.to_le_bytes()));
    out.extend(chunk);
    out
}

/// The spheremap encoding the kernel decodes: `f = (x - x²) + (y - y²)`,
/// `m = sqrt(4f - 1)`, `n = (m (4x - 2), m (4y - 2), 3 - 8f)`; of the normalized `n`.
fn encode_normal(x: f32, y: f32, z: f32) -> (f32, f32) {
    let len = (x * x + y * y + z * z).sqrt();
    let (x, y, z) = (x / len, y / len, z / len);
    let m = ((1.0 - z) / 2.0).sqrt();
    ((x / m + 2.0) / 4.0, (y / m + 2.0) / 4.0)
}

fn put_f32(out: &mut Vec<u8>, v: f32) {
    out.extend(v.to_le_bytes());
}

fn put_half(out: &mut Vec<u8>, v: f32) {
    out.extend(sim::fp16::f16_from_f32(v).to_le_bytes());
}

/// A small linear congruential generator (Knuth's MMIX constants): a fixed, documented
/// sequence, so the scene is the same everywhere.
struct Lcg(u64);

impl Lcg {
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((self.0 >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// The example's `MAX_LIGHTS`: `RenderStatic` culls that many lights whatever the
/// header's count, so a scene has exactly that many (fewer would have the kernel read
/// past the light arrays, which the simulators trap).
pub const LIGHTS: u32 = 1024;

/// The image the example's host writes after its `RenderStatic` frames.
pub const IMAGE: &str = "deferred-ispc-static.ppm";

/// The arrays of the chunk by the names `RenderStatic_arrays` gives them, with their
/// element sizes: eight per pixel, eight per light.
const ARRAY_NAMES: [(&str, usize); ARRAYS] = [
    ("zBuffer", 4),
    ("normalEncoded_x", 2),
    ("normalEncoded_y", 2),
    ("specularAmount", 2),
    ("specularPower", 2),
    ("albedo_x", 1),
    ("albedo_y", 1),
    ("albedo_z", 1),
    ("lightPositionView_x", 4),
    ("lightPositionView_y", 4),
    ("lightPositionView_z", 4),
    ("lightAttenuationBegin", 4),
    ("lightColor_x", 4),
    ("lightColor_y", 4),
    ("lightColor_z", 4),
    ("lightAttenuationEnd", 4),
];

/// Writes into `capture` the call of `entry` (the driver's `RenderStatic_arrays`) that
/// the host made through `RenderStatic`: its inputs from the scene file `scene`, its
/// outputs from the host's image `image` (the framebuffer's bytes, interleaved), in the
/// files a capture wrapper writes. The inputs are the host's exactly (it read them from
/// this file) and unchanged by the call; the image is the framebuffer of its last
/// frame, all frames being equal.
pub fn synthesize_capture(
    scene: &Path,
    image: &Path,
    capture: &Path,
    entry: &str,
) -> Result<(), String> {
    let bytes =
        std::fs::read(scene).map_err(|e| format!("cannot read {}: {e}", scene.display()))?;
    if bytes.len() < 152 {
        return Err(format!("{} is shorter than its header", scene.display()));
    }
    let word = |i: usize| i32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4]));
    let (width, height, lights) = (word(18), word(19), word(20));
    let pixels = (width.max(0) * height.max(0)) as usize;
    let chunk = &bytes[152..];
    let write = |part: &str, name: &str, data: &[u8]| {
        let file = capture.join(format!("{entry}.{part}.{name}.bin"));
        std::fs::write(&file, data).map_err(|e| format!("cannot write {}: {e}", file.display()))
    };
    // The inputs, which RenderStatic only reads: after the call as before it.
    let input = |name: &str, data: &[u8]| {
        write("in", name, data)?;
        write("out", name, data)
    };
    input("header", &bytes[..152])?;
    for (i, (name, size)) in ARRAY_NAMES.iter().enumerate() {
        let count = if i < 8 {
            pixels
        } else {
            lights.max(0) as usize
        };
        let start = word(22 + i).max(0) as usize;
        let data = chunk
            .get(start..start + count * size)
            .ok_or_else(|| format!("{}: array `{name}` runs past the chunk", scene.display()))?;
        input(name, data)?;
    }
    write("in", "visualizeLightCount", &0i32.to_le_bytes())?;
    let ppm = std::fs::read(image).map_err(|e| format!("cannot read {}: {e}", image.display()))?;
    let rgb = ppm_pixels(&ppm, width as usize, height as usize)
        .ok_or_else(|| format!("{} is not a {width}x{height} binary PPM", image.display()))?;
    for (c, channel) in ["r", "g", "b"].iter().enumerate() {
        let name = format!("framebuffer_{channel}");
        write("in", &name, &vec![0; pixels])?;
        let plane: Vec<u8> = rgb.iter().skip(c).step_by(3).copied().collect();
        write("out", &name, &plane)?;
    }
    let done = capture.join(format!("{entry}.done"));
    std::fs::write(&done, b"").map_err(|e| format!("cannot write {}: {e}", done.display()))
}

/// The pixel bytes of a binary PPM (`P6`) of `width` x `height` with maxval 255.
fn ppm_pixels(ppm: &[u8], width: usize, height: usize) -> Option<&[u8]> {
    let mut fields = Vec::new();
    let mut i = 0;
    while fields.len() < 4 {
        while ppm.get(i)?.is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while !ppm.get(i)?.is_ascii_whitespace() {
            i += 1;
        }
        fields.push(std::str::from_utf8(&ppm[start..i]).ok()?);
    }
    let data = ppm.get(i + 1..)?;
    let ok = fields[0] == "P6"
        && fields[1].parse() == Ok(width)
        && fields[2].parse() == Ok(height)
        && fields[3] == "255"
        && data.len() == 3 * width * height;
    ok.then_some(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_describes_the_chunk() {
        let (w, h, n) = (32u32, 16u32, 5u32);
        let bytes = deferred_scene(w, h, n);
        let word = |i: usize| i32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!((word(18), word(19), word(20)), (32, 16, 5));
        let chunk = word(21) as usize;
        assert_eq!(bytes.len(), 152 + chunk);
        let offsets: Vec<usize> = (22..38).map(|i| word(i) as usize).collect();
        // Each array is 64-byte aligned, in order, and the sizes follow the element types.
        let sizes = [4, 2, 2, 2, 2, 1, 1, 1].map(|b| b * (w * h) as usize);
        for (i, size) in sizes.iter().chain(&[4 * n as usize; 8]).enumerate() {
            assert_eq!(offsets[i] % 64, 0);
            let end = offsets.get(i + 1).copied().unwrap_or(chunk);
            assert!(
                end - offsets[i] >= *size && end - offsets[i] < size + 64,
                "array {i}"
            );
        }
        // The same scene every time.
        assert_eq!(bytes, deferred_scene(w, h, n));
    }

    #[test]
    fn normals_decode_to_unit_vectors() {
        let (ex, ey) = encode_normal(0.3, -0.2, -1.0);
        let f = (ex - ex * ex) + (ey - ey * ey);
        let m = (4.0 * f - 1.0).sqrt();
        let n = (m * (4.0 * ex - 2.0), m * (4.0 * ey - 2.0), 3.0 - 8.0 * f);
        let len = (n.0 * n.0 + n.1 * n.1 + n.2 * n.2).sqrt();
        assert!((len - 1.0).abs() < 1e-5, "{n:?}");
        assert!(n.2 < 0.0);
    }

    #[test]
    fn a_capture_is_the_scene_and_the_image_split_by_array_and_channel() {
        let dir = std::env::temp_dir().join(format!("spmdc-deferred-test-{}", std::process::id()));
        let capture = dir.join("capture");
        std::fs::create_dir_all(&capture).unwrap();
        let (w, h) = (4u32, 2u32);
        let scene = deferred_scene(w, h, 3);
        std::fs::write(dir.join("scene.bin"), &scene).unwrap();
        let mut ppm = b"P6\n4 2\n255\n".to_vec();
        ppm.extend((0..24u8).map(|i| i * 10));
        std::fs::write(dir.join("image.ppm"), &ppm).unwrap();
        synthesize_capture(
            &dir.join("scene.bin"),
            &dir.join("image.ppm"),
            &capture,
            "e",
        )
        .unwrap();
        let read = |name: &str| std::fs::read(capture.join(name)).unwrap();
        assert_eq!(read("e.in.header.bin"), scene[..152]);
        assert_eq!(read("e.out.header.bin"), scene[..152]);
        assert_eq!(read("e.in.zBuffer.bin").len(), 4 * 8);
        assert_eq!(read("e.in.albedo_z.bin").len(), 8);
        assert_eq!(read("e.in.lightAttenuationEnd.bin").len(), 4 * 3);
        assert_eq!(
            read("e.out.framebuffer_g.bin"),
            [10, 40, 70, 100, 130, 160, 190, 220]
        );
        assert_eq!(read("e.in.framebuffer_b.bin"), [0; 8]);
        assert!(capture.join("e.done").is_file());
        // An image of another size is refused.
        std::fs::write(dir.join("image.ppm"), b"P6\n2 2\n255\n............").unwrap();
        let e = synthesize_capture(
            &dir.join("scene.bin"),
            &dir.join("image.ppm"),
            &capture,
            "e",
        )
        .unwrap_err();
        assert!(e.contains("is not a 4x2 binary PPM"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
