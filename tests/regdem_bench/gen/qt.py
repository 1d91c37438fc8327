import os
HERE = os.path.dirname(os.path.abspath(__file__))
P = 8; D = 4
L = []; p = lambda s, ind="    ": L.append(ind + s)
p("// the candidate pool: the seed's listed neighbours (entry -1 or the seed itself: none)")
for k in range(P):
    p(f"int j{k} = nbr[{k} * n + i];")
    p(f"bool ok{k} = and(j{k} >= 0, j{k} != i);")
    p(f"int jj{k} = select(ok{k}, j{k}, 0);")
    for d in range(D):
        p(f"float p{k}_{d} = pts[{d} * n + jj{k}];")
p("// maxd[k]: the largest distance from pool point k to the cluster (so far the seed)")
for k in range(P):
    diffs = " + ".join(f"(p{k}_{d} - s{d}) * (p{k}_{d} - s{d})" for d in range(D))
    p(f"float maxd{k} = sqrt({diffs});")
    p(f"bool av{k} = and(ok{k}, maxd{k} <= thr);")
p("int cmem = 0;")
p("int csize = 1;")
p("float cdiam = 0.0f;")
p("for (uniform int step = 0; step < 8; step++) {")
I = "        "
p("// the available point whose addition grows the diameter least (lowest k on ties)", I)
p("float bd = 3.0e38f;", I)
p("int bk = -1;", I)
for k in range(P):
    p(f"bool t{k} = and(av{k}, maxd{k} < bd);", I)
    p(f"bd = select(t{k}, maxd{k}, bd);", I)
    p(f"bk = select(t{k}, {k}, bk);", I)
p("bool grow = bk >= 0;", I)
p("cmem = select(grow, cmem | (1 << max(bk, 0)), cmem);", I)
p("csize = select(grow, csize + 1, csize);", I)
p("cdiam = select(grow, max(cdiam, bd), cdiam);", I)
p("// the new member's coordinates", I)
for d in range(D):
    expr = f"p0_{d}"
    for k in range(1, P):
        expr = f"select(bk == {k}, p{k}_{d}, {expr})"
    p(f"float q{d} = {expr};", I)
p("// update every pool point's distance to the cluster; drop those now too far", I)
for k in range(P):
    diffs = " + ".join(f"(p{k}_{d} - q{d}) * (p{k}_{d} - q{d})" for d in range(D))
    p(f"float e{k} = sqrt({diffs});", I)
    p(f"maxd{k} = select(grow, max(maxd{k}, e{k}), maxd{k});", I)
    p(f"av{k} = and(and(av{k}, bk != {k}), maxd{k} <= thr);", I)
p("}")
src = open(os.path.join(HERE, "qt.tmpl")).read().replace("@BODY@", "\n".join(L))
open(os.path.join(HERE, "..", "qtc_candidate.spmd"), "w").write(src)
