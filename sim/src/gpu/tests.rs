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
