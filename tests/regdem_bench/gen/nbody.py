import os
HERE = os.path.dirname(os.path.abspath(__file__))
U = 4
L = []; p = lambda s, ind="            ": L.append(ind + s)
for u in range(U):
    p(f"float xj{u} = sx[jj + {u}], yj{u} = sy[jj + {u}], zj{u} = sz[jj + {u}], mj{u} = sm[jj + {u}];")
for u in range(U):
    for b in "ab":
        p(f"float dx{b}{u} = xj{u} - x{b}, dy{b}{u} = yj{u} - y{b}, dz{b}{u} = zj{u} - z{b};")
for u in range(U):
    for b in "ab":
        p(f"float r2{b}{u} = dx{b}{u} * dx{b}{u} + dy{b}{u} * dy{b}{u} + dz{b}{u} * dz{b}{u} + eps2;")
for u in range(U):
    for b in "ab":
        p(f"float ir{b}{u} = 1.0f / sqrt(r2{b}{u});")
        p(f"float s{b}{u} = mj{u} * ir{b}{u} * ir{b}{u} * ir{b}{u};")
for u in range(U):
    for b in "ab":
        p(f"ax{b} += dx{b}{u} * s{b}{u}; ay{b} += dy{b}{u} * s{b}{u}; az{b} += dz{b}{u} * s{b}{u};")
src = open(os.path.join(HERE, "nbody.tmpl")).read().replace("@BODY@", "\n".join(L))
open(os.path.join(HERE, "..", "nbody.spmd"), "w").write(src)
