import os
HERE = os.path.dirname(os.path.abspath(__file__))
T = 17; R = 8
L = []; p = lambda s, ind="    ": L.append(ind + s)
p("// the 2 x 17 taps, loaded once into registers")
for t in range(T):
    p(f"uniform float th{t} = taps[{t}];")
for t in range(T):
    p(f"uniform float tv{t} = taps[{T + t}];")
p("// the 17 clamped column indices of the horizontal taps")
for t in range(T):
    p(f"int cx{t} = clamp(x + {t - R}, 0, w - 1);")
def hrow(dst, yexpr, ind):
    p(f"int row_{dst} = clamp({yexpr}, 0, h - 1) * w;", ind)
    terms = " + ".join(f"th{t} * img[row_{dst} + cx{t}]" for t in range(T))
    # break the long sum over lines
    parts = [f"th{t} * img[row_{dst} + cx{t}]" for t in range(T)]
    p(f"float {dst} = {parts[0]}", ind)
    for q in parts[1:]:
        p(f"        + {q}", ind)
    L[-1] += ";"
p("// the window of horizontally filtered rows y0-8 .. y0+7")
for t in range(T - 1):
    hrow(f"v{t}", f"y0 + {t - R}", "    ")
p("for (uniform int y = y0; y < y1; y++) {")
hrow("v16", "y + 8", "        ")
parts = [f"tv{t} * v{t}" for t in range(T)]
p(f"out[y * w + x] = {parts[0]}", "        ")
for q in parts[1:]:
    p(f"        + {q}", "        ")
L[-1] += ";"
p("// slide the window down one row", "        ")
for t in range(T - 2):
    p(f"v{t} = v{t + 1};", "        ")
p(f"v{T - 2} = v{T - 1};", "        ")
p("}")
src = open(os.path.join(HERE, "conv.tmpl")).read().replace("@BODY@", "\n".join(L))
open(os.path.join(HERE, "..", "conv_sep17.spmd"), "w").write(src)
