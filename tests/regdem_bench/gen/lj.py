import os
HERE = os.path.dirname(os.path.abspath(__file__))
U = 4
L = []
p = L.append
for u in range(U):
    p(f"        int j{u} = neigh[(m + {u}) * n + i];")
for u in range(U):
    p(f"        float dx{u} = xi - x[j{u}];")
    p(f"        float dy{u} = yi - y[j{u}];")
    p(f"        float dz{u} = zi - z[j{u}];")
p("        // minimum-image convention in the periodic box")
for u in range(U):
    for c in "xyz":
        p(f"        d{c}{u} = d{c}{u} - box * round(d{c}{u} * inv_box);")
for u in range(U):
    p(f"        float rsq{u} = dx{u} * dx{u} + dy{u} * dy{u} + dz{u} * dz{u};")
p("        // a neighbour counts if it is inside the cutoff and is not the atom itself")
for u in range(U):
    p(f"        bool in{u} = and(rsq{u} < cutsq, j{u} != i);")
for u in range(U):
    p(f"        float sr2_{u} = 1.0f / select(in{u}, rsq{u}, 1.0f);")
    p(f"        float sr6_{u} = sr2_{u} * sr2_{u} * sr2_{u};")
for u in range(U):
    p(f"        float fpair{u} = select(in{u}, (lj1 * sr6_{u} - lj2) * sr6_{u} * sr2_{u}, 0.0f);")
    p(f"        float epair{u} = select(in{u}, (lj3 * sr6_{u} - lj4) * sr6_{u} - eshift, 0.0f);")
for u in range(U):
    p(f"        fxi += dx{u} * fpair{u};")
    p(f"        fyi += dy{u} * fpair{u};")
    p(f"        fzi += dz{u} * fpair{u};")
    p(f"        ei += epair{u};")
    p(f"        vxx += dx{u} * dx{u} * fpair{u};")
    p(f"        vyy += dy{u} * dy{u} * fpair{u};")
    p(f"        vzz += dz{u} * dz{u} * fpair{u};")
    p(f"        vxy += dx{u} * dy{u} * fpair{u};")
    p(f"        vxz += dx{u} * dz{u} * fpair{u};")
    p(f"        vyz += dy{u} * dz{u} * fpair{u};")
body = "\n".join(L)
src = open(os.path.join(HERE, "lj.tmpl")).read().replace("@BODY@", body)
open(os.path.join(HERE, "..", "lj_forces.spmd"), "w").write(src)
