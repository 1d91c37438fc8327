import os
HERE = os.path.dirname(os.path.abspath(__file__))
L = []; p = lambda s, ind="            ": L.append(ind + s)
for kk in range(2):
    for r in range(4):
        p(f"float a{kk}{r} = As[k + {kk}][ty + {16 * r}];")
    for cc in range(4):
        p(f"float b{kk}{cc} = Bs[k + {kk}][tx + {16 * cc}];")
for kk in range(2):
    for r in range(4):
        p(" ".join(f"c{r}{cc} += a{kk}{r} * b{kk}{cc};" for cc in range(4)))
body = "\n".join(L)
init = "\n".join("    " + " ".join(f"float c{r}{cc} = 0;" for cc in range(4)) for r in range(4))
st = []
for r in range(4):
    for cc in range(4):
        st.append(f"    c[(row0 + {16 * r}) * n + col0 + {16 * cc}] = alpha * c{r}{cc} + beta * c[(row0 + {16 * r}) * n + col0 + {16 * cc}];")
src = open(os.path.join(HERE, "gemm.tmpl")).read().replace("@BODY@", body).replace("@INIT@", init).replace("@STORE@", "\n".join(st))
open(os.path.join(HERE, "..", "sgemm4x4.spmd"), "w").write(src)
