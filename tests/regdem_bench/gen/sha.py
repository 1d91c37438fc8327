import os
HERE = os.path.dirname(os.path.abspath(__file__))
# SHA-256 generator: fully unrolled 64 rounds, the bit functions written out
# as expressions (no inline function calls: see BUGS.md, bug 1)
K = [0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,
0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,
0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,
0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967,
0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,
0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,
0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,
0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2]
rotr = lambda x, r: f"(({x} >> {r}) | ({x} << {32 - r}))"
S0 = lambda x: f"({rotr(x, 2)} ^ {rotr(x, 13)} ^ {rotr(x, 22)})"
S1 = lambda x: f"({rotr(x, 6)} ^ {rotr(x, 11)} ^ {rotr(x, 25)})"
s0 = lambda x: f"({rotr(x, 7)} ^ {rotr(x, 18)} ^ ({x} >> 3))"
s1 = lambda x: f"({rotr(x, 17)} ^ {rotr(x, 19)} ^ ({x} >> 10))"
ch = lambda x, y, z: f"(({x} & {y}) ^ (~{x} & {z}))"
maj = lambda x, y, z: f"(({x} & {y}) ^ ({x} & {z}) ^ ({y} & {z}))"
L = []; p = L.append
I = "        "
p(I + "// the block's 16 message words: the schedule ring")
for t in range(16):
    p(f"{I}uint w{t} = msg[(blk * 16 + {t}) * n + i];")
p(I + "uint a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;")
names = list("abcdefgh")
for t in range(64):
    A,B,C,D,E,F,G,H = names
    wi = t % 16
    p(f"{I}// round {t}")
    if t >= 16:
        p(f"{I}w{wi} = w{wi} + {s1(f'w{(t-2)%16}')} + w{(t-7)%16} + {s0(f'w{(t-15)%16}')};")
    p(f"{I}{H} = {H} + {S1(E)} + {ch(E, F, G)} + 0x{K[t]:08x}u + w{wi};")
    p(f"{I}{D} = {D} + {H};")
    p(f"{I}{H} = {H} + {S0(A)} + {maj(A, B, C)};")
    names = [H, A, B, C, D, E, F, G]
assert names == list("abcdefgh")
for k, nm in enumerate("abcdefgh"):
    p(f"{I}h{k} = h{k} + {nm};")
src = open(os.path.join(HERE, "sha.tmpl")).read().replace("@BODY@", "\n".join(L))
open(os.path.join(HERE, "..", "sha256.spmd"), "w").write(src)
