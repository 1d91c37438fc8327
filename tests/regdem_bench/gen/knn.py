import os
HERE = os.path.dirname(os.path.abspath(__file__))
K = 12
L = []; p = lambda s, ind="                ": L.append(ind + s)
p("float cd = d;")
p("int ci = base + jj;")
for m in range(K):
    p(f"bool s{m} = cd < d{m};")
    if m < K - 1: p(f"float td{m} = d{m};")
    if m < K - 1: p(f"int ti{m} = i{m};")
    p(f"d{m} = select(s{m}, cd, d{m});")
    p(f"i{m} = select(s{m}, ci, i{m});")
    if m < K - 1:
        p(f"cd = select(s{m}, td{m}, cd);")
        p(f"ci = select(s{m}, ti{m}, ci);")
ins = "\n".join(L)
init = "\n".join(f"    float d{m} = 3.0e38f;\n    int i{m} = -1;" for m in range(K))
store = "\n".join(f"        knn_dist[{m} * n + q] = d{m};\n        knn_idx[{m} * n + q] = i{m};" for m in range(K))
src = open(os.path.join(HERE, "knn.tmpl")).read().replace("@INSERT@", ins).replace("@INIT@", init).replace("@STORE@", store)
open(os.path.join(HERE, "..", "knn.spmd"), "w").write(src)
