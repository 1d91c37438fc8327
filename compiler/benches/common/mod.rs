//! Generated sources for the benchmarks: one 25-line kernel touching most of the
//! language, repeated with fresh names, with or without the commentary a documented
//! kernel carries.

/// One kernel of 25 lines touching most of the language; repeated with fresh names.
pub fn kernel(i: usize) -> String {
    format!(
        r#"struct Particle{i} {{ float x, y, vx, vy; uniform int id; }};
static inline float damp{i}(float v, uniform float k) {{ return v * (1.0f - k); }}
export void step{i}(uniform float pos[], uniform float vel[], uniform int n, uniform float dt) {{
    uniform float total = 0;
    foreach (j = 0 ... n) {{
        float p = pos[j];
        float v = damp{i}(vel[j], 0.01f);
        if (p < 0.0f || p > 100.0f) {{
            v = -v;
        }} else if (v > 10.0f) {{
            v = 10.0f;
        }}
        for (uniform int k = 0; k < 4; ++k) {{
            p += v * dt * 0.25f;
        }}
        pos[j] = p;
        vel[j] = v;
        total += reduce_add(p);
    }}
    cif (programIndex == 0) {{
        uniform int s = (int)total % 7;
        switch (s) {{ case 0: pos[0] = total; break; default: pos[1] = total; }}
    }}
}}

"#
    )
}

/// The comments and blank lines a documented kernel carries (13 lines).
pub fn commentary(i: usize) -> String {
    format!(
        r#"// ---------------------------------------------------------------------------
// step{i}: advances the particles of set {i} by one time step.
//
// Each program instance moves one particle: it damps the velocity, reflects the
// particle at the walls of the box [0, 100], and integrates the position in four
// sub-steps. Lane 0 then stores the gang's total into one of two slots.
//
// Launch: spmdc run bench.spmd --entry step{i} --arg n=1024 --arg dt=0.01 ...
// ---------------------------------------------------------------------------

"#
    )
}

pub fn source(lines: usize, commented: bool) -> String {
    let mut s = String::new();
    let mut count = 0;
    let mut i = 0;
    while count < lines {
        if commented {
            s.push_str(&commentary(i));
        }
        s.push_str(&kernel(i));
        count = s.lines().count();
        i += 1;
    }
    s
}
