#!/usr/bin/env python3
"""Writes the surfaces that scenes/meshes/make_assets.sh meshes: torus.off (a closed torus
for TetGen) and tablecloth.obj (a round cloth, with texture coordinates split along a seam).
Deterministic: the same files every run."""
import math

# A torus about the y axis: ring radius R, tube radius r, n segments around the ring and m
# around the tube.
R, r, n, m = 0.35, 0.15, 24, 10
verts, faces = [], []
for i in range(n):
    a = 2 * math.pi * i / n
    for j in range(m):
        b = 2 * math.pi * j / m
        d = R + r * math.cos(b)
        verts.append((d * math.cos(a), r * math.sin(b), d * math.sin(a)))
for i in range(n):
    for j in range(m):
        p, q = i * m + j, ((i + 1) % n) * m + j
        p1, q1 = i * m + (j + 1) % m, ((i + 1) % n) * m + (j + 1) % m
        faces += [(p, p1, q1), (p, q1, q)]
with open("torus.off", "w") as f:
    f.write("OFF\n%d %d 0\n" % (len(verts), len(faces)))
    for v in verts:
        f.write("%.6f %.6f %.6f\n" % v)
    for t in faces:
        f.write("3 %d %d %d\n" % t)

# A round cloth of radius 0.8 m in the xz plane: a centre vertex and `rings` rings of 6k
# vertices. Its texture coordinates are polar (u = angle, v = radius), so the ring's last
# corner and its first have different vt: a seam along the +x axis that the loader must not
# tear.
rings, radius = 10, 0.8
verts, uvs, faces = [(0.0, 0.0, 0.0)], [], []
uv_index = {}


def uv(ring, k, count):
    key = (ring, k)
    if key not in uv_index:
        uvs.append((k / count if count else 0.0, ring / rings))
        uv_index[key] = len(uvs)
    return uv_index[key]


start = [0]
for ring in range(1, rings + 1):
    start.append(len(verts))
    count = 6 * ring
    for k in range(count):
        a = 2 * math.pi * k / count
        verts.append((radius * ring / rings * math.cos(a), 0.0, radius * ring / rings * math.sin(a)))


def corner(ring, k):
    """Vertex and vt of corner k of a ring (k may be the ring's count: the seam)."""
    count = 6 * ring
    v = 1 if ring == 0 else start[ring] + k % count + 1
    return v, uv(ring, k, count)


for ring in range(1, rings + 1):
    inner, outer = 6 * (ring - 1), 6 * ring
    # Walk both rings together; each step adds a triangle on whichever ring lags.
    i = o = 0
    while i < inner or o < outer:
        if o < outer and (inner == 0 or (o + 1) / outer <= (i + 1) / inner or i == inner):
            faces.append((corner(ring - 1, i), corner(ring, o + 1), corner(ring, o)))
            o += 1
        else:
            faces.append((corner(ring - 1, i), corner(ring - 1, i + 1), corner(ring, o)))
            i += 1
with open("tablecloth.obj", "w") as f:
    f.write("# a round cloth, radius %g m, %d rings; vt is polar, with a seam at +x\n" % (radius, rings))
    f.write("o tablecloth\n")
    for v in verts:
        f.write("v %.6f %.6f %.6f\n" % v)
    for t in uvs:
        f.write("vt %.6f %.6f\n" % t)
    f.write("s off\n")
    for t in faces:
        f.write("f %s\n" % " ".join("%d/%d" % c for c in t))
