import os
HERE = os.path.dirname(os.path.abspath(__file__))
L = []; p = lambda s: L.append("    " + s)
V = ["r", "u", "v", "p"]
cells = {"c": "0", "w1": "-1", "w2": "-2", "e1": "1", "e2": "2",
         "s1": "-nx", "s2": "-2 * nx", "n1": "nx", "n2": "2 * nx"}
p("// primitive variables (rho, u, v, p) of the 9 cells of the cross-shaped stencil")
for k, off in cells.items():
    o = f" + {off}" if not off.startswith("-") else f" - {off[1:]}"
    if off == "0": o = ""
    p(f"float r_{k} = rho[c{o}];")
    p(f"float u_{k} = mx[c{o}] / r_{k};")
    p(f"float v_{k} = my[c{o}] / r_{k};")
    p(f"float p_{k} = gm1 * (en[c{o}] - 0.5f * r_{k} * (u_{k} * u_{k} + v_{k} * v_{k}));")
lines = {"x": ["w2", "w1", "c", "e1", "e2"], "y": ["s2", "s1", "c", "n1", "n2"]}
p("// limited slopes (minmod) of the cells next to the 4 faces")
for d, cs in lines.items():
    for m in (1, 2, 3):
        k = cs[m] if not (cs[m] == "c" and d == "y") else "c"
        nm = f"{cs[m]}{d}" if cs[m] == "c" else cs[m]
        for q in V:
            p(f"float d{q}_{nm} = minmod({q}_{k} - {q}_{cs[m-1]}, {q}_{cs[m+1]} - {q}_{k});")
def face(d, name, lc, lslope, rc, rslope):
    p(f"// face {name}: MUSCL left and right states, Rusanov flux")
    for q in V:
        p(f"float {q}L_{name} = {q}_{lc} + 0.5f * d{q}_{lslope};")
        p(f"float {q}R_{name} = {q}_{rc} - 0.5f * d{q}_{rslope};")
    n = "u" if d == "x" else "v"
    t = "v" if d == "x" else "u"
    for s in "LR":
        R, N, T, P = f"r{s}_{name}", f"{n}{s}_{name}", f"{t}{s}_{name}", f"p{s}_{name}"
        p(f"float E{s}_{name} = {P} * inv_gm1 + 0.5f * {R} * ({N} * {N} + {T} * {T});")
        p(f"float a{s}_{name} = abs({N}) + sqrt(gamma * {P} / {R});")
    p(f"float a_{name} = max(aL_{name}, aR_{name});")
    # conserved order: rho, m_normal, m_tangent, E
    def cons(s):
        R, N, T = f"r{s}_{name}", f"{n}{s}_{name}", f"{t}{s}_{name}"
        return [R, f"{R} * {N}", f"{R} * {T}", f"E{s}_{name}"]
    def flux(s):
        R, N, T, P, E = f"r{s}_{name}", f"{n}{s}_{name}", f"{t}{s}_{name}", f"p{s}_{name}", f"E{s}_{name}"
        return [f"{R} * {N}", f"{R} * {N} * {N} + {P}", f"{R} * {N} * {T}", f"{N} * ({E} + {P})"]
    UL, UR, FL, FR = cons("L"), cons("R"), flux("L"), flux("R")
    outn = ["rho", "mn", "mt", "en"]
    for k in range(4):
        p(f"float f{outn[k]}_{name} = 0.5f * (({FL[k]}) + ({FR[k]})) - 0.5f * a_{name} * (({UR[k]}) - ({UL[k]}));")
face("x", "E", "c", "cx", "e1", "e1")
face("x", "W", "w1", "w1", "c", "cx")
face("y", "N", "c", "cy", "n1", "n1")
face("y", "S", "s1", "s1", "c", "cy")
p("// flux divergence; x faces carry (rho, mx, my, E), y faces (rho, my, mx, E)")
p("res_rho[c] = -(frho_E - frho_W) * inv_dx - (frho_N - frho_S) * inv_dy;")
p("res_mx[c] = -(fmn_E - fmn_W) * inv_dx - (fmt_N - fmt_S) * inv_dy;")
p("res_my[c] = -(fmt_E - fmt_W) * inv_dx - (fmn_N - fmn_S) * inv_dy;")
p("res_en[c] = -(fen_E - fen_W) * inv_dx - (fen_N - fen_S) * inv_dy;")
src = open(os.path.join(HERE, "euler.tmpl")).read().replace("@BODY@", "\n".join(L))
open(os.path.join(HERE, "..", "euler_flux.spmd"), "w").write(src)
