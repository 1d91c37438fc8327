import os
HERE = os.path.dirname(os.path.abspath(__file__))
C = 4
L = []; p = lambda s, ind="    ": L.append(ind + s)
p("// causal pass, top to bottom; the border is replicated (steady state)")
for k in range(C):
    p(f"float xp{k} = img[x{k}];")
    p(f"float yp{k} = coefp * xp{k};")
    p(f"float yb{k} = yp{k};")
p("for (uniform int y = 0; y < h; y++) {")
for k in range(C):
    p(f"float xc{k} = img[y * w + x{k}];", "        ")
for k in range(C):
    p(f"float yc{k} = a0 * xc{k} + a1 * xp{k} - b1 * yp{k} - b2 * yb{k};", "        ")
for k in range(C):
    p(f"out[y * w + x{k}] = yc{k};", "        ")
    p(f"xp{k} = xc{k}; yb{k} = yp{k}; yp{k} = yc{k};", "        ")
p("}")
p("// anticausal pass, bottom to top, added to the causal result")
for k in range(C):
    p(f"float xn{k} = img[(h - 1) * w + x{k}];")
    p(f"float xa{k} = xn{k};")
    p(f"float yn{k} = coefn * xn{k};")
    p(f"float ya{k} = yn{k};")
p("for (uniform int y = h - 1; y >= 0; y--) {")
for k in range(C):
    p(f"float xc{k} = img[y * w + x{k}];", "        ")
for k in range(C):
    p(f"float yc{k} = a2 * xn{k} + a3 * xa{k} - b1 * yn{k} - b2 * ya{k};", "        ")
for k in range(C):
    p(f"out[y * w + x{k}] = out[y * w + x{k}] + yc{k};", "        ")
    p(f"xa{k} = xn{k}; xn{k} = xc{k}; ya{k} = yn{k}; yn{k} = yc{k};", "        ")
p("}")
src = open(os.path.join(HERE, "deriche.tmpl")).read().replace("@BODY@", "\n".join(L))
src = src.replace("@COLS@", "\n".join(f"    int x{k} = t + {k} * nthreads;" for k in range(C)))
open(os.path.join(HERE, "..", "deriche.spmd"), "w").write(src)
