//! Tests of the dac-gpu ISA: assembler, printer, round trips, errors, configuration and
//! occupancy.

use super::*;

const SAXPY: &str = "
// y[i] = a * x[i] + y[i]
.entry saxpy(.param .u32 n, .param .f32 a, .param .u32 x, .param .u32 y)
{
    .reg 8;
    .pred 1;
    mov.u32 %r0, %ctaid.x;
    mov.u32 %r1, %ntid.x;
    mad.u32 %r0, %r0, %r1, %tid.x;   // global index
    ld.param.u32 %r2, [n];
    setp.ge.u32 %p0, %r0, %r2;
    @%p0 bra.uni DONE;
    shl.b32 %r3, %r0, 2;
    ld.param.u32 %r4, [x];
    add.u32 %r4, %r4, %r3;
    ld.global.f32 %r5, [%r4];
    ld.param.u32 %r4, [y];
    add.u32 %r4, %r4, %r3;
    ld.global.f32 %r6, [%r4+0];
    ld.param.f32 %r7, [a];
    mad.f32 %r6, %r7, %r5, %r6;
    st.global.f32 [%r4], %r6;
DONE:
    exit;
}
";

fn must_parse(text: &str) -> Program {
    match parse(text) {
        Ok(p) => p,
        Err(es) => panic!(
            "{}",
            es.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

fn assert_round_trip(p: &Program) {
    let text = print(p);
    let back = must_parse(&text);
    assert_eq!(&back, p, "parse(print(p)) != p for:\n{text}");
    assert_eq!(print(&back), text);
}

#[test]
fn saxpy_assembles_and_round_trips() {
    let p = must_parse(SAXPY);
    let k = p.kernel("saxpy").unwrap();
    assert_eq!(k.num_regs, 8);
    assert_eq!(k.insts.len(), 17);
    assert_eq!(
        k.params.iter().map(|p| p.offset).collect::<Vec<_>>(),
        vec![0, 4, 8, 12]
    );
    assert_eq!(
        k.insts[5].op,
        Op::Bra {
            uni: true,
            target: 16
        }
    );
    assert_eq!(
        k.insts[5].guard,
        Some(Guard {
            pred: 0,
            negate: false
        })
    );
    assert_round_trip(&p);
}

// ---------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------

#[test]
fn presets_load_with_the_issue_parameters() {
    let g = GpuConfig::preset("gtx480").expect("gtx480 preset parses");
    assert_eq!(
        (
            g.num_sms,
            g.warp_size,
            g.max_warps_per_sm,
            g.max_blocks_per_sm
        ),
        (15, 32, 48, 8)
    );
    assert_eq!(
        (g.registers_per_sm, g.shared_mem_per_sm),
        (32768, 48 * 1024)
    );
    assert_eq!(
        (g.l1_size, g.l2_size, g.line_size),
        (16 * 1024, 768 * 1024, 128)
    );
    let m = GpuConfig::preset("maxwell").expect("maxwell preset parses");
    assert_eq!(
        (
            m.registers_per_sm,
            m.max_threads_per_sm,
            m.shared_mem_per_sm
        ),
        (65536, 2048, 96 * 1024)
    );
    assert_eq!(GpuConfig::load("maxwell"), Ok(m));
}

#[test]
fn config_text_round_trips_and_base_overrides() {
    let g = GpuConfig::gtx480();
    assert_eq!(GpuConfig::from_text(&g.to_text()), Ok(g.clone()));
    let c =
        GpuConfig::from_text("base = \"gtx480\"\nnum_sms = 4 # small\nname = \"tiny\"\n").unwrap();
    assert_eq!((c.num_sms, c.name.as_str(), c.warp_size), (4, "tiny", 32));
}

#[test]
fn config_errors_name_the_line() {
    let e = GpuConfig::from_text("base = \"gtx480\"\nnum_smz = 4\n").unwrap_err();
    assert_eq!((e.line, e.msg.as_str()), (2, "unknown key `num_smz`"));
    let e = GpuConfig::from_text("base = \"gtx480\"\nnum_sms = four\n").unwrap_err();
    assert_eq!(e.line, 2);
    let e = GpuConfig::from_text("base = \"gtx480\"\nnum_sms = 1\nnum_sms = 2\n").unwrap_err();
    assert_eq!((e.line, e.msg.as_str()), (3, "`num_sms` is given twice"));
    let e = GpuConfig::from_text("num_sms = 1\n").unwrap_err();
    assert!(e.msg.starts_with("missing keys: name, warp_size"), "{e}");
    let e = GpuConfig::from_text("base = \"gtx480\"\nwarp_size = 0\n").unwrap_err();
    assert_eq!(e.msg, "`warp_size` must be positive");
    assert!(GpuConfig::load("/nonexistent/x.toml")
        .unwrap_err()
        .contains("neither a preset"));
}

// ---------------------------------------------------------------------------------
// Occupancy: hand-computed cases, one per limiting resource and preset
// ---------------------------------------------------------------------------------

fn occ(cfg: &GpuConfig, threads: u32, regs: u32, shared: u32) -> Occupancy {
    occupancy(
        cfg,
        BlockResources {
            threads_per_block: threads,
            regs_per_thread: regs,
            shared_per_block: shared,
        },
    )
    .expect("kernel fits")
}

fn assert_occ(o: &Occupancy, blocks: u32, warps: u32, limiter: Limiter) {
    assert_eq!(
        (o.blocks_per_sm, o.active_warps, o.limiters.as_slice()),
        (blocks, warps, &[limiter][..]),
        "{o:?}"
    );
}

#[test]
fn gtx480_limited_by_registers() {
    // 256 threads = 8 warps, 21 regs: 21*32 = 672 -> round up to 64 = 704 per warp;
    // floor(32768/704) = 46 warps, round down to 2 -> 46; floor(46/8) = 5 blocks, one
    // pool (32768/32768). Warps allow min(8, 48/8) = 6, shared memory 8: 5 blocks,
    // 40 warps, 40/48 = 83.3%. (Without the allocation unit, 672: 48 warps, 6 blocks.)
    let o = occ(&GpuConfig::gtx480(), 256, 21, 0);
    assert_occ(&o, 5, 40, Limiter::Registers);
    assert!((o.occupancy - 40.0 / 48.0).abs() < 1e-12);
}

#[test]
fn gtx480_limited_by_shared_memory() {
    // 128 threads = 4 warps, 16 regs (512 per warp: 64 warps -> 16 blocks), 9800 bytes
    // shared -> rounded to 128: 9856; floor(49152/9856) = 4 blocks (9800 unrounded
    // would allow 5). Warps: min(8, 48/4 = 12) = 8. 4 blocks, 16 warps, 33.3%.
    let o = occ(&GpuConfig::gtx480(), 128, 16, 9800);
    assert_occ(&o, 4, 16, Limiter::SharedMemory);
}

#[test]
fn gtx480_limited_by_blocks_per_sm() {
    // 64 threads = 2 warps, 16 regs: regs allow floor(64/2) = 32 blocks, warps 48/2 =
    // 24, shared 8; the SM holds at most 8 blocks: 8 blocks, 16 warps, 33.3%.
    let o = occ(&GpuConfig::gtx480(), 64, 16, 0);
    assert_occ(&o, 8, 16, Limiter::Blocks);
}

#[test]
fn gtx480_limited_by_warps_per_sm() {
    // 512 threads = 16 warps, 16 regs: regs allow floor(64/16) = 4 blocks; warps
    // floor(48/16) = 3 (< 8 blocks): 3 blocks, 48 warps, 100%.
    let o = occ(&GpuConfig::gtx480(), 512, 16, 0);
    assert_occ(&o, 3, 48, Limiter::Warps);
    assert_eq!(o.occupancy, 1.0);
}

#[test]
fn maxwell_limited_by_registers() {
    // 192 threads = 6 warps, 50 regs: 50*32 = 1600 -> round up to 256 = 1792 per warp;
    // a 32768-register block pool holds floor(32768/1792) = 18 warps, round down to 4
    // -> 16; floor(16/6) = 2 blocks per pool, 65536/32768 = 2 pools: 4 blocks. Warps
    // allow min(32, floor(64/6) = 10) = 10. 4 blocks, 24 warps, 37.5%.
    let o = occ(&GpuConfig::maxwell(), 192, 50, 0);
    assert_occ(&o, 4, 24, Limiter::Registers);
    assert!((o.occupancy - 0.375).abs() < 1e-12);
}

#[test]
fn maxwell_limited_by_shared_memory() {
    // 128 threads = 4 warps, 32 regs (1024 per warp: 32 warps per pool -> 8 blocks,
    // x2 pools = 16), 19600 bytes -> rounded to 256: 19712; floor(98304/19712) = 4
    // (5 unrounded). Warps: min(32, 16) = 16. 4 blocks, 16 warps, 25%.
    let o = occ(&GpuConfig::maxwell(), 128, 32, 19600);
    assert_occ(&o, 4, 16, Limiter::SharedMemory);
}

#[test]
fn maxwell_limited_by_blocks_per_sm() {
    // 32 threads = 1 warp, 32 regs: regs allow 32 warps per pool x 2 = 64 blocks, warps
    // 64; at most 32 blocks per SM: 32 blocks, 32 warps, 50%.
    let o = occ(&GpuConfig::maxwell(), 32, 32, 0);
    assert_occ(&o, 32, 32, Limiter::Blocks);
}

#[test]
fn maxwell_limited_by_warps_per_sm() {
    // 1024 threads = 32 warps, 16 regs (512 per warp: 64 warps per pool -> 2 blocks x 2
    // pools = 4); warps floor(64/32) = 2: 2 blocks, 64 warps, 100%.
    let o = occ(&GpuConfig::maxwell(), 1024, 16, 0);
    assert_occ(&o, 2, 64, Limiter::Warps);
}

#[test]
fn occupancy_rejects_blocks_that_cannot_run() {
    let g = GpuConfig::gtx480();
    let run = |t, r, s| {
        occupancy(
            &g,
            BlockResources {
                threads_per_block: t,
                regs_per_thread: r,
                shared_per_block: s,
            },
        )
    };
    assert_eq!(run(0, 8, 0), Err(OccupancyError::NoThreads));
    assert_eq!(
        run(1025, 8, 0),
        Err(OccupancyError::TooManyThreads {
            threads: 1025,
            max: 1024
        })
    );
    assert_eq!(
        run(64, 64, 0),
        Err(OccupancyError::TooManyRegisters { regs: 64, max: 63 })
    );
    assert_eq!(
        run(64, 8, 49153),
        Err(OccupancyError::TooMuchShared {
            bytes: 49153,
            max: 49152
        })
    );
    // 1024 threads x 63 regs: 2048 regs per warp, 16 warps per pool < 32 warps.
    assert_eq!(
        run(1024, 63, 0),
        Err(OccupancyError::BlockRegistersExceeded)
    );
    // Ties report every limiter: 192 threads = 6 warps -> 8 blocks by warps and blocks.
    assert_eq!(
        run(192, 8, 0).unwrap().limiters,
        vec![Limiter::Warps, Limiter::Blocks]
    );
}
